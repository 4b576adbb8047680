import { router } from '../../trpc';
import { checkServiceability } from './check-serviceability';

export const serviceabilityRouter = router({ check: checkServiceability });
