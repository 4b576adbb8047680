import { and, eq } from 'drizzle-orm';
import { subjects, type Database } from '@lop/db';
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

export async function isSubjectLinked(db: Pick<Database, 'select'>, caller: Caller, externalSubjectId: string): Promise<boolean> {
  const [row] = await db
    .select({ id: subjects.externalSubjectId })
    .from(subjects)
    .where(and(eq(subjects.clientId, caller.clientId), eq(subjects.environment, caller.environment), eq(subjects.externalSubjectId, externalSubjectId)));
  return !!row;
}
