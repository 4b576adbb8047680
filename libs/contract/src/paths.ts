/** The spec's {base_url} is an origin followed by this path; every partner route is below it. */
export const PARTNER_BASE_PATH = '/api/public/partner';
/** Where the service serves its OpenAPI and AsyncAPI documents. */
export const OPENAPI_PATH = '/api/public/partner-openapi';
export const ASYNCAPI_PATH = '/api/public/partner-asyncapi';
