import { router } from '../../trpc';
import { listEvents } from './list-events';

export const eventsRouter = router({ list: listEvents });
