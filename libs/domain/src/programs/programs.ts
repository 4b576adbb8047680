import { and, asc, eq, sql, type SQL } from 'drizzle-orm';
import { preparedStatement, programGrants, programs, type Database, type Executor } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import { notFound } from '../http/errors';
import type { Program } from './programs.schemas';

export type ProgramRow = typeof programs.$inferSelect;

/** Programs the caller's client is granted, in the caller's laboratory and environment. */
const grantedTo = (db: Executor, ...conditions: SQL[]) =>
  db
    .select({ program: programs })
    .from(programs)
    .innerJoin(programGrants, and(eq(programGrants.programId, programs.id), eq(programGrants.clientId, sql.placeholder('clientId'))))
    .where(and(eq(programs.laboratoryId, sql.placeholder('laboratoryId')), eq(programs.environment, sql.placeholder('environment')), ...conditions));
const callerValues = (caller: Caller) => ({ clientId: caller.clientId, laboratoryId: caller.laboratoryId, environment: caller.environment });

const grantedPrograms = preparedStatement((db) => grantedTo(db).orderBy(asc(programs.name), asc(programs.id)).prepare('granted_programs'));
const grantedProgram = preparedStatement((db) => grantedTo(db, eq(programs.id, sql.placeholder('programId'))).prepare('granted_program'));

export async function listGrantedPrograms(db: Database, caller: Caller): Promise<ProgramRow[]> {
  const rows = await grantedPrograms(db).execute(callerValues(caller));
  return rows.map((r) => r.program);
}

/** The granted program, or 404: unknown, ungranted and other-tenant programs look the same. */
export async function getGrantedProgram(db: Executor, caller: Caller, programId: string): Promise<ProgramRow> {
  const [row] = await grantedProgram(db).execute({ ...callerValues(caller), programId });
  if (!row) throw notFound('program');
  return row.program;
}

export function toProgram(row: ProgramRow): Program {
  return { program_id: row.id, name: row.name, status: row.status, currency: row.currency, environment: row.environment };
}
