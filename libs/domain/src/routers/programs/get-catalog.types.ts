import { z } from 'zod';
import { catalogItemSchema } from '../../catalog/catalog.schemas';
import { pathId, strictInput } from '../../common-schemas';
import { envelopeOf } from '../../http/envelope';
import type { PartnerProcedureMeta } from '../../trpc';

export const getCatalogMeta: PartnerProcedureMeta = {
  reads: 'replica',
  scope: 'catalog:read',
  errors: ['not_found'],
  openapi: {
    method: 'GET',
    path: '/v1/programs/{programId}/catalog',
    tags: ['Catalog'],
    summary: "List a program's orderable tests",
    description: 'Active catalog items of a granted program.',
  },
};
export const getCatalogInput = strictInput({ programId: pathId('Program identifier.') });
export const getCatalogOutput = envelopeOf(z.array(catalogItemSchema));
