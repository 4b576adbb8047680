import { router } from '../../trpc';
import { getLab } from './get-lab';

export const labRouter = router({ get: getLab });
