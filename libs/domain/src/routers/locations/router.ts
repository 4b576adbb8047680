import { router } from '../../trpc';
import { listLocations } from './list-locations';

export const locationsRouter = router({ list: listLocations });
