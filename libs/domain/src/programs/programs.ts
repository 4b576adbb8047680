import { and, asc, eq, sql } from 'drizzle-orm';
import { preparedStatement, programGrants, programs, type Database, type Executor } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import { notFound } from '../http/errors';
import type { Program } from './programs.schemas';

export type ProgramRow = typeof programs.$inferSelect;

/** Programs the caller's client is granted, in the caller's laboratory and environment. */
function grantedPrograms(db: Pick<Database, 'select'>, caller: Caller) {
  return db
    .select({ program: programs })
    .from(programs)
    .innerJoin(programGrants, and(eq(programGrants.programId, programs.id), eq(programGrants.clientId, caller.clientId)))
    .where(and(eq(programs.laboratoryId, caller.laboratoryId), eq(programs.environment, caller.environment)))
    .$dynamic();
}

export async function listGrantedPrograms(db: Database, caller: Caller): Promise<ProgramRow[]> {
  const rows = await grantedPrograms(db, caller).orderBy(asc(programs.name), asc(programs.id));
  return rows.map((r) => r.program);
}

/** The granted program, or 404: unknown, ungranted and other-tenant programs look the same. */
const grantedProgram = preparedStatement((db) =>
  db
    .select({ program: programs })
    .from(programs)
    .innerJoin(programGrants, and(eq(programGrants.programId, programs.id), eq(programGrants.clientId, sql.placeholder('clientId'))))
    .where(and(eq(programs.laboratoryId, sql.placeholder('laboratoryId')), eq(programs.environment, sql.placeholder('environment')), eq(programs.id, sql.placeholder('programId'))))
    .prepare('granted_program'),
);

export async function getGrantedProgram(db: Executor, caller: Caller, programId: string): Promise<ProgramRow> {
  const [row] = await grantedProgram(db).execute({ clientId: caller.clientId, laboratoryId: caller.laboratoryId, environment: caller.environment, programId });
  if (!row) throw notFound('program');
  return row.program;
}

export function toProgram(row: ProgramRow): Program {
  return { program_id: row.id, name: row.name, status: row.status, currency: row.currency, environment: row.environment };
}
