import { and, asc, eq, inArray, sql, type SQL } from 'drizzle-orm';
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
export const orderProgramGranted = (): SQL => programGranted(sql`"orders"."client_id"`, sql`"orders"."program_id"`, sql`"orders"."environment"`);

/**
 * The grant rule itself, for any query that carries a client, a program and an environment: the
 * order reads (orderProgramGranted) and the request log (bodies about an order no longer readable
 * are withheld); as rows, grantsOf (webhook worker) and lockGrantedPrograms (event append). One
 * rule, in this file, so revocation means the same thing at every door.
 */
export const programGranted = (clientId: SQL, programId: SQL, environment: SQL): SQL =>
  sql`exists (select 1 from ${programGrants} pg where pg.client_id = ${clientId} and pg.program_id = ${programId} and pg.environment = ${environment})`;

/**
 * Every grant of these clients (the same rule, as rows): the webhook worker asks it once per batch,
 * so an event of a withdrawn program is never sent. `has(client, program, environment)`.
 */
export async function grantsOf(db: Executor, clientIds: string[]): Promise<{ has(clientId: string, programId: string, environment: string): boolean }> {
  const rows = clientIds.length === 0 ? [] : await db.select().from(programGrants).where(inArray(programGrants.clientId, clientIds));
  const granted = new Set(rows.map((r) => `${r.clientId}:${r.programId}:${r.environment}`));
  return { has: (clientId, programId, environment) => granted.has(`${clientId}:${programId}:${environment}`) };
}

/**
 * Of `programIds`, those granted to the client in the environment (the same rule, as a row look-up),
 * their grant rows held FOR KEY SHARE until the transaction ends: a concurrent `admin programs
 * revoke` (a delete) waits for this transaction, and one that committed first is seen here. The
 * event append uses it, so no event of a program is appended after its grant was withdrawn.
 */
export async function lockGrantedPrograms(tx: Executor, clientId: string, environment: string, programIds: string[]): Promise<Set<string>> {
  if (programIds.length === 0) return new Set();
  const rows = await tx
    .select({ programId: programGrants.programId })
    .from(programGrants)
    .where(and(eq(programGrants.clientId, clientId), eq(programGrants.environment, environment as 'sandbox' | 'production'), inArray(programGrants.programId, [...new Set(programIds)].sort())))
    .orderBy(asc(programGrants.programId))
    .for('key share');
  return new Set(rows.map((r) => r.programId));
}

export function toProgram(row: ProgramRow): Program {
  return { program_id: row.id, name: row.name, status: row.status, currency: row.currency, environment: row.environment };
}
