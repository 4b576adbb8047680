import { router } from '../../trpc';
import { putSubject } from './put-subject';

export const subjectsRouter = router({ put: putSubject });
