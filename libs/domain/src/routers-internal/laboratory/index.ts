import { createOperatorCallerFactory, internalRouter, type OperatorContext } from '../trpc';
import { accept } from './accept';
import { accession } from './accession';
import { acknowledge } from './acknowledge';
import { cancel } from './cancel';
import { collect } from './collect';
import { failTransmission } from './fail-transmission';
import { flagCritical } from './flag-critical';
import { listExceptions } from './list-exceptions';
import { openException } from './open-exception';
import { receive } from './receive';
import { recordResult } from './record-result';
import { rejectSpecimen } from './reject-specimen';
import { releaseResult } from './release-result';
import { resolveException } from './resolve-exception';
import { ship } from './ship';
import { showOrder } from './show-order';
import { transmit } from './transmit';

/**
 * Laboratory operations for operators (DESIGN §11). Never part of partnerRouter and never
 * mounted on partner REST: callers use createCaller with a database (admin CLI, sandbox).
 */
export const laboratoryRouter = internalRouter({
  show: showOrder,
  transmit,
  acknowledge,
  failTransmission,
  accept,
  collect,
  ship,
  receive,
  accession,
  rejectSpecimen,
  recordResult,
  releaseResult,
  flagCritical,
  cancel,
  exceptions: internalRouter({ list: listExceptions, open: openException, resolve: resolveException }),
});

/** A direct, in-process caller of the laboratory operations. */
export function laboratoryCaller(context: OperatorContext) {
  return createOperatorCallerFactory(laboratoryRouter)(context);
}
