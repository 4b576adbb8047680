import { and, eq, sql } from 'drizzle-orm';
import { preparedStatement, subjects, type Database, type Executor } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import type { SubjectLink } from './subjects.schemas';

/**
 * The synthetic subject every sandbox fixture orders for (GET /v1/sandbox/order-fixtures). It is
 * registered for every API client's sandbox by definition — nothing is written for it, and a
 * GET never has to — and exists in no production stream (docs/sandbox.md).
 */
export const SANDBOX_SUBJECT_ID = 'sandbox-synthetic-subject-0001';

/** Registers an opaque subject reference; repeating it changes nothing. */
export async function linkSubject(db: Database, caller: Caller, externalSubjectId: string): Promise<SubjectLink> {
  await db
    .insert(subjects)
    .values({ clientId: caller.clientId, environment: caller.environment, externalSubjectId })
    .onConflictDoNothing();
  return { external_subject_id: externalSubjectId, linked: true };
}

const linkedSubject = preparedStatement((db) =>
  db
    .select({ id: subjects.externalSubjectId })
    .from(subjects)
    .where(
      and(
        eq(subjects.clientId, sql.placeholder('clientId')),
        eq(subjects.environment, sql.placeholder('environment')),
        eq(subjects.externalSubjectId, sql.placeholder('externalSubjectId')),
      ),
    )
    .prepare('linked_subject'),
);

export async function isSubjectLinked(db: Executor, caller: Caller, externalSubjectId: string): Promise<boolean> {
  if (caller.environment === 'sandbox' && externalSubjectId === SANDBOX_SUBJECT_ID) return true;
  const [row] = await linkedSubject(db).execute({ clientId: caller.clientId, environment: caller.environment, externalSubjectId });
  return !!row;
}
