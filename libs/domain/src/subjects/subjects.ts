import { and, eq, sql } from 'drizzle-orm';
import { preparedStatement, subjects, type Database, type Executor } from '@lop/db';
import type { Caller } from '../auth/authenticate';
import type { SubjectLink } from './subjects.schemas';

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
  const [row] = await linkedSubject(db).execute({ clientId: caller.clientId, environment: caller.environment, externalSubjectId });
  return !!row;
}
