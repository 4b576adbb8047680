import { router } from '../../trpc';
import { getReport } from './get-report';
import { getReportDocument } from './get-report-document';
import { getResult } from './get-result';
import { getResultFhir } from './get-result-fhir';
import { listResults } from './list-results';

export const resultsRouter = router({ list: listResults, get: getResult, fhir: getResultFhir, report: getReport, reportDocument: getReportDocument });
