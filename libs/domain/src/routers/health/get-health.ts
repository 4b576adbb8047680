import { ok } from '../../http/envelope';
import { SERVICE_VERSION } from '../../versions';
import { partnerProcedure } from '../../trpc';
import { getHealthInput, getHealthMeta, getHealthOutput } from './get-health.types';

export const getHealth = partnerProcedure(getHealthMeta)
  .input(getHealthInput)
  .output(getHealthOutput)
  .query(({ ctx }) =>
    ok(ctx, { status: 'ok' as const, version: SERVICE_VERSION, environment: ctx.caller.environment, server_time: new Date().toISOString() }),
  );
