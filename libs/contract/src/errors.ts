/**
 * Every failure a partner can see: its code, HTTP status and meaning. One table, so the REST
 * layer, the tRPC layer and the OpenAPI document can never disagree.
 */
export const ERROR_CODES = {
  invalid_request: { status: 400, description: 'The request is malformed: bad JSON, a missing, unknown, too long or ill-typed field, or a bad query parameter.' },
  unauthorized: { status: 401, description: 'The API key is missing, malformed, unknown, revoked or expired.' },
  forbidden: { status: 403, description: 'The API key is valid but lacks the scope this endpoint needs.' },
  not_found: { status: 404, description: 'No such route, or no such resource for this key (unknown, ungranted, another tenant or environment, malformed id, unreleased result).' },
  report_not_modeled: { status: 404, description: 'The result is released but the laboratory supplied no canonical report document; no report is fabricated.' },
  method_not_allowed: { status: 405, description: 'The route does not answer this method; the Allow header lists the methods it does.' },
  not_acceptable: { status: 406, description: 'The response cannot be given in the media type asked for (`Accept`, or FHIR’s `_format`): the FHIR view answers JSON only.' },
  conflict: { status: 409, description: 'The request conflicts with current state; details[0].issue names which conflict.' },
  payload_too_large: { status: 413, description: 'The request body is larger than the service accepts.' },
  unsupported_media_type: { status: 415, description: 'Request bodies must be JSON (Content-Type: application/json).' },
  not_orderable: { status: 422, description: 'The program, test or subject is not orderable; details list what is missing.' },
  simulation_not_allowed: { status: 422, description: 'Simulation needs a sandbox key, a synthetic order, and an order in the state the next step of the scenario needs; details[0].issue says which.' },
  rate_limited: { status: 429, description: 'Too many requests; retry after the number of seconds in Retry-After.' },
  internal_error: { status: 500, description: 'An unexpected error; it is logged with the request_id.' },
  unavailable: { status: 503, description: 'The service cannot reach its database; retry after the number of seconds in Retry-After.' },
} as const satisfies Record<string, { status: number; description: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;
