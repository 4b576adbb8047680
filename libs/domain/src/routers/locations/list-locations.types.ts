import { z } from 'zod';
import { strictInput } from '../../common-schemas';
import { envelopeOf } from '../../http/envelope';
import { locationSchema } from '../../locations/locations.schemas';
import type { PartnerProcedureMeta } from '../../trpc';

export const listLocationsMeta: PartnerProcedureMeta = {
  scope: 'serviceability:read',
  openapi: {
    method: 'GET',
    path: '/v1/locations',
    tags: ['Serviceability'],
    summary: 'List serviceable collection locations',
    description: "Active locations in the service geography of the key's granted active programs, in the key's environment. Street address, telephone and internal detail are never returned.",
  },
};
export const listLocationsInput = strictInput({});
export const listLocationsOutput = envelopeOf(z.array(locationSchema));
