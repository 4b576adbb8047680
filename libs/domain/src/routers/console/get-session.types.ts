import { strictInput } from '../../common-schemas';
import { consoleSessionSchema } from '../../console/console.schemas';
import { envelopeOf } from '../../http/envelope';
import type { PartnerProcedureMeta } from '../../trpc';

// No `openapi` meta: the sandbox console reaches this over tRPC only; it is not a partner REST route.
export const getSessionMeta: PartnerProcedureMeta = { scope: 'none' };
export const getSessionInput = strictInput({});
export const getSessionOutput = envelopeOf(consoleSessionSchema);
