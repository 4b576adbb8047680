import { router } from '../../trpc';
import { getHealth } from './get-health';

export const healthRouter = router({ get: getHealth });
