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

/**
 * The condition every read of an order on the caller's behalf adds (orders, results, reports,
 * retrievals, cancel, simulate, the console's list): the order's program is still granted to the
 * order's client in its environment. The spec's read rule names the program; a withdrawn grant
 * (`admin programs revoke`) makes the program's orders 404 like an ungranted program's, and
 * granting again brings them back. Written against "orders" by name, for queries on that table.
 */
export const orderProgramGranted = (): SQL =>
  sql`exists (select 1 from ${programGrants} pg where pg.client_id = "orders"."client_id" and pg.program_id = "orders"."program_id" and pg.environment = "orders"."environment")`;

export function toProgram(row: ProgramRow): Program {
  return { program_id: row.id, name: row.name, status: row.status, currency: row.currency, environment: row.environment };
}
