import { router } from '../../trpc';
import { listOrderFixtures } from './list-order-fixtures';
import { listRequestLog } from './list-request-log';
import { listScenarios } from './list-scenarios';
import { simulateOrder } from './simulate-order';

export const sandboxRouter = router({ orderFixtures: listOrderFixtures, scenarios: listScenarios, simulate: simulateOrder, requestLog: listRequestLog });
