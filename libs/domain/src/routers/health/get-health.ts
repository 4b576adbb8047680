import { ok } from '../../http/envelope';
import { SERVICE_VERSION } from '../../versions';
import { keyProcedure } from '../../trpc';
import { getHealthInput, getHealthMeta, getHealthOutput } from './get-health.types';

export const getHealth = keyProcedure
  .meta(getHealthMeta)
  .input(getHealthInput)
  .output(getHealthOutput)
  .query(({ ctx }) =>
    ok(ctx, { status: 'ok' as const, version: SERVICE_VERSION, environment: ctx.caller.environment, server_time: new Date().toISOString() }),
  );
