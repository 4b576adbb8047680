import { router } from '../trpc';
import { consoleRouter } from './console/router';
import { eventsRouter } from './events/router';
import { healthRouter } from './health/router';
import { labRouter } from './lab/router';
import { locationsRouter } from './locations/router';
import { ordersRouter } from './orders/router';
import { programsRouter } from './programs/router';
import { resultsRouter } from './results/router';
import { sandboxRouter } from './sandbox/router';
import { serviceabilityRouter } from './serviceability/router';
import { subjectsRouter } from './subjects/router';

/** Every partner procedure, one router per area; REST routes and the console's tRPC client both come from here. */
export const partnerRouter = router({
  health: healthRouter,
  lab: labRouter,
  locations: locationsRouter,
  programs: programsRouter,
  serviceability: serviceabilityRouter,
  subjects: subjectsRouter,
  orders: ordersRouter,
  results: resultsRouter,
  events: eventsRouter,
  sandbox: sandboxRouter,
  console: consoleRouter,
});

export type PartnerRouter = typeof partnerRouter;
