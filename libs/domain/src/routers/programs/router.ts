import { router } from '../../trpc';
import { getCatalog } from './get-catalog';
import { getProgram } from './get-program';
import { getRequirements } from './get-requirements';
import { listPrograms } from './list-programs';

export const programsRouter = router({ list: listPrograms, get: getProgram, catalog: getCatalog, requirements: getRequirements });
