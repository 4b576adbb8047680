import { ok } from '../../http/envelope';
import { linkSubject } from '../../subjects/subjects';
import { partnerProcedure } from '../../trpc';
import { putSubjectInput, putSubjectMeta, putSubjectOutput } from './put-subject.types';

export const putSubject = partnerProcedure(putSubjectMeta)
  .input(putSubjectInput)
  .output(putSubjectOutput)
  .mutation(async ({ ctx, input }) => ok(ctx, await linkSubject(ctx.db, ctx.caller, input.externalSubjectId)));
