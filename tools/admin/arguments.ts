import { ENVIRONMENTS, type Scope } from '@lop/contract';
import { InvalidArgumentError } from 'commander';
import { hasRefusedCharacter, parseScopeList } from '@lop/domain';
import { parseDuration } from './duration';

// Commander reports an InvalidArgumentError as a usage error naming the option: exit code 2.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function uuidArgument(text: string): string {
  if (!UUID.test(text.trim())) throw new InvalidArgumentError('expected a uuid such as 0b9c2f4e-6a1d-4c3b-8e7f-1a2b3c4d5e6f.');
  return text.trim().toLowerCase();
}

export function scopesArgument(text: string): Scope[] {
  try {
    return parseScopeList(text);
  } catch (error) {
    throw new InvalidArgumentError(`${(error as Error).message}, or all.`);
  }
}

/** Returns the expiry instant counted from now. */
export function expiresInArgument(text: string): Date {
  try {
    return new Date(Date.now() + parseDuration(text));
  } catch (error) {
    throw new InvalidArgumentError(`${(error as Error).message}.`);
  }
}

const MAX_NAME_LENGTH = 200;

export function nameArgument(text: string): string {
  const name = text.trim();
  if (name.length === 0) throw new InvalidArgumentError('the name is empty.');
  if (name.length > MAX_NAME_LENGTH) throw new InvalidArgumentError(`the name is longer than ${MAX_NAME_LENGTH} characters.`);
  // The same rule as partner text: a name is one line, without control characters.
  if (hasRefusedCharacter(name)) throw new InvalidArgumentError('the name contains a control character.');
  return name;
}

export const ENVIRONMENT_CHOICES = [...ENVIRONMENTS];
