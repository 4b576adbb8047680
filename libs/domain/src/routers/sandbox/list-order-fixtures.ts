import { ok } from '../../http/envelope';
import { listOrderFixtures as list } from '../../sandbox/fixtures';
import { partnerProcedure } from '../../trpc';
import { listOrderFixturesInput, listOrderFixturesMeta, listOrderFixturesOutput } from './list-order-fixtures.types';

export const listOrderFixtures = partnerProcedure(listOrderFixturesMeta)
  .input(listOrderFixturesInput)
  .output(listOrderFixturesOutput)
  .query(async ({ ctx }) => ok(ctx, await list(ctx.db, ctx.caller), null));
