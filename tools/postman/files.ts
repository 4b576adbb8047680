/** Where the generated Postman artifacts live (committed, so partners can import them). */
export const COLLECTION_FILE = 'docs/postman/collection.json';
export const ENVIRONMENT_FILE = 'docs/postman/sandbox.environment.json';
