import { router } from '../trpc';
import { getCatalog } from './programs/get-catalog';
import { getHealth } from './health/get-health';
import { getLab } from './lab/get-lab';
import { listLocations } from './locations/list-locations';
import { getProgram } from './programs/get-program';
import { listPrograms } from './programs/list-programs';
import { getRequirements } from './programs/get-requirements';
import { checkServiceability } from './serviceability/check-serviceability';
import { putSubject } from './subjects/put-subject';
import { cancelOrder } from './orders/cancel-order';
import { createOrder } from './orders/create-order';
import { getOrder } from './orders/get-order';
import { listEvents } from './events/list-events';
import { listOrderExceptions } from './orders/list-order-exceptions';
import { getReport } from './results/get-report';
import { getReportDocument } from './results/get-report-document';
import { getResult } from './results/get-result';
import { getResultFhir } from './results/get-result-fhir';
import { listResults } from './results/list-results';
import { listOrderFixtures } from './sandbox/list-order-fixtures';
import { listScenarios } from './sandbox/list-scenarios';
import { simulateOrder } from './sandbox/simulate-order';
import { listRequestLog } from './sandbox/list-request-log';
import { getRequestLogEntry } from './console/get-request-log-entry';
import { listEventDeliveries } from './console/list-event-deliveries';
import { listOrders as listConsoleOrders } from './console/list-orders';
import { getSession as getConsoleSession } from './console/get-session';
import { listOrderScenarios } from './console/list-order-scenarios';
import { createWebhookEndpoint } from './console/create-webhook-endpoint';
import { disableWebhookEndpoint } from './console/disable-webhook-endpoint';
import { listWebhookDeliveries } from './console/list-webhook-deliveries';
import { listWebhookEndpoints } from './console/list-webhook-endpoints';
import { recoverWebhookDeliveries } from './console/recover-webhook-deliveries';
import { resendWebhookDelivery } from './console/resend-webhook-delivery';
import { retryWebhookDelivery } from './console/retry-webhook-delivery';
import { rotateWebhookSecret } from './console/rotate-webhook-secret';
import { sendWebhookTest } from './console/send-webhook-test';
import { updateWebhookEndpoint } from './console/update-webhook-endpoint';

/** Every partner procedure; REST routes and the console's tRPC client both come from here. */
export const partnerRouter = router({
  health: router({ get: getHealth }),
  lab: router({ get: getLab }),
  locations: router({ list: listLocations }),
  programs: router({ list: listPrograms, get: getProgram, catalog: getCatalog, requirements: getRequirements }),
  serviceability: router({ check: checkServiceability }),
  subjects: router({ put: putSubject }),
  orders: router({ create: createOrder, get: getOrder, cancel: cancelOrder, exceptions: listOrderExceptions }),
  results: router({ list: listResults, get: getResult, fhir: getResultFhir, report: getReport, reportDocument: getReportDocument }),
  events: router({ list: listEvents }),
  sandbox: router({ orderFixtures: listOrderFixtures, scenarios: listScenarios, simulate: simulateOrder, requestLog: listRequestLog }),
  // tRPC only (no openapi meta): views the sandbox console needs that partner REST does not offer.
  console: router({
    session: getConsoleSession,
    orders: listConsoleOrders,
    orderScenarios: listOrderScenarios,
    eventDeliveries: listEventDeliveries,
    requestLogEntry: getRequestLogEntry,
    // Sandbox webhook self-service; production subscriptions stay with the laboratory's administrators.
    webhooks: router({
      list: listWebhookEndpoints,
      create: createWebhookEndpoint,
      update: updateWebhookEndpoint,
      rotateSecret: rotateWebhookSecret,
      disable: disableWebhookEndpoint,
      sendTest: sendWebhookTest,
      deliveries: listWebhookDeliveries,
      resend: resendWebhookDelivery,
      retryNow: retryWebhookDelivery,
      recover: recoverWebhookDeliveries,
    }),
  }),
});

export type PartnerRouter = typeof partnerRouter;
