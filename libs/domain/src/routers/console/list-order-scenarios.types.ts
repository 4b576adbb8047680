import { pathId, strictInput } from '../../common-schemas';
import { consoleOrderScenariosSchema } from '../../console/console.schemas';
import { envelopeOf } from '../../http/envelope';
import type { PartnerProcedureMeta } from '../../trpc';

// No `openapi` meta: the sandbox console reaches this over tRPC only; it is not a partner REST route.
export const listOrderScenariosMeta: PartnerProcedureMeta = { scope: 'orders:read' };
export const listOrderScenariosInput = strictInput({ orderId: pathId('Order identifier.') });
export const listOrderScenariosOutput = envelopeOf(consoleOrderScenariosSchema);
