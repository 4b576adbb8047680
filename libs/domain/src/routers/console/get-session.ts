import { describeConsoleSession } from '../../console/session';
import { ok } from '../../http/envelope';
import { partnerProcedure } from '../../trpc';
import { getSessionInput, getSessionMeta, getSessionOutput } from './get-session.types';

/** The key in use: prefix, environment, scopes and expiry (sandbox console only; any valid key may read its own). */
export const getSession = partnerProcedure(getSessionMeta)
  .input(getSessionInput)
  .output(getSessionOutput)
  .query(async ({ ctx }) => ok(ctx, await describeConsoleSession(ctx.db, ctx.caller)));
