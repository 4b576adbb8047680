/** The spec's Limits table, in one place: schemas, tests and docs read them from here. */
export const LIMITS = {
  idempotencyKey: 190,
  externalOrderId: 190,
  externalSubjectId: 190,
  collectionLocation: 190,
  collection: 40,
  billingMode: 40,
  region: 80,
  clinicalNotes: 2000,
} as const;
