import { z } from 'zod';
import { strictInput } from '../../common-schemas';
import { envelopeOf } from '../../http/envelope';
import { orderFixtureSchema } from '../../sandbox/sandbox.schemas';
import type { PartnerProcedureMeta } from '../../trpc';

export const listOrderFixturesMeta: PartnerProcedureMeta = {
  scope: 'none',
  openapi: {
    method: 'GET',
    path: '/v1/sandbox/order-fixtures',
    tags: ['Sandbox'],
    summary: 'List synthetic order fixtures',
    description:
      'One request template for each ordering contract — `minimal`, `provider`, `patient` and `aoe` (ask-at-order-entry) — built from your granted sandbox tests and their requirements profiles. Each `body` is valid as it is for POST /v1/orders: its `external_order_id` is generated afresh on every listing (use your own unique value for each order you place), and its `external_subject_id` is `sandbox-synthetic-subject-0001`, a synthetic subject registered in every API client\'s sandbox (listing writes nothing; in production it is an ordinary, unregistered id). A contract none of your granted tests exercises is listed with `available: false`, `body: null` and the reason. Patient and provider data in the templates are synthetic. A production key gets an empty list: fixtures exist only in the sandbox.',
  },
};
export const listOrderFixturesInput = strictInput({});
export const listOrderFixturesOutput = envelopeOf(z.array(orderFixtureSchema));
