// The migration runner (docs/migrations.md): reading committed migrations, applying them without
// long locks, and telling whether this release can serve a database's schema.
export { migrationsFolder, readMigrations, MigrationFileError, type Migration, type MigrationStatement } from './migrator/read';
export { runMigrations, MigrationError, MIGRATION_DEFAULTS, tableOf, type MigrateOptions, type MigrationRun } from './migrator/run';
export { CODE_NEEDS_MIGRATION, schemaVerdict, readSchemaVerdict, assertSchemaServed, prepareSchema, SchemaNotServedError, type SchemaVerdict } from './migrator/compatibility';
