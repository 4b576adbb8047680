import { userInfo } from 'node:os';
import { InvalidArgumentError } from 'commander';
import { hasRefusedCharacter, type ControlActor } from '@lop/domain';

/**
 * Who runs this admin command, for the audit trail: `--operator <name>` (for a shared account or
 * automation: name the person or system), by default the OS user. The CLI runs with database
 * access, so the name is a declaration, not an authentication (docs/audit.md § Operators).
 */
let current: string | undefined;

export function defaultOperator(): string {
  let name = process.env.USER ?? '';
  try {
    name ||= userInfo().username;
  } catch {
    // No user database entry (some containers).
  }
  return name || 'unknown';
}

export function operatorArgument(text: string): string {
  const name = text.trim();
  if (name.length === 0 || name.length > 200 || hasRefusedCharacter(name)) throw new InvalidArgumentError('expected a name of 1 to 200 characters on one line.');
  return name;
}

export function setOperator(name: string | undefined): void {
  current = name;
}

export const operatorName = (): string => current ?? defaultOperator();

/** The audit actor of this command. */
export function operatorActor(): ControlActor {
  return { kind: 'operator', name: operatorName() };
}
