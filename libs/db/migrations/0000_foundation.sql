CREATE TYPE "public"."environment" AS ENUM('sandbox', 'production');--> statement-breakpoint
CREATE TYPE "public"."api_client_status" AS ENUM('active', 'disabled');--> statement-breakpoint
CREATE TYPE "public"."authority_state" AS ENUM('configured', 'not_configured');--> statement-breakpoint
CREATE TYPE "public"."catalog_item_status" AS ENUM('active', 'inactive');--> statement-breakpoint
CREATE TYPE "public"."program_status" AS ENUM('active', 'inactive');--> statement-breakpoint
CREATE TYPE "public"."location_service_status" AS ENUM('active', 'inactive');--> statement-breakpoint
CREATE TABLE "laboratories" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"display_name" text NOT NULL,
	"legal_name" text NOT NULL,
	"operating_name" text NOT NULL,
	"certification_identifiers" text[] DEFAULT '{}' NOT NULL,
	"jurisdictions" text[] DEFAULT '{}' NOT NULL,
	"service_geography" text[] DEFAULT '{}' NOT NULL,
	"collection_methods" text[] DEFAULT '{}' NOT NULL,
	"collection_modes" text[] DEFAULT '{}' NOT NULL,
	"specimen_categories" text[] DEFAULT '{}' NOT NULL,
	"coding_systems_supplied" text[] DEFAULT '{}' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "api_clients" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"laboratory_id" uuid NOT NULL,
	"name" text NOT NULL,
	"status" "api_client_status" DEFAULT 'active' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "api_keys" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"client_id" uuid NOT NULL,
	"laboratory_id" uuid NOT NULL,
	"environment" "environment" NOT NULL,
	"key_hash" text NOT NULL,
	"display_prefix" text NOT NULL,
	"scopes" text[] NOT NULL,
	"expires_at" timestamp with time zone,
	"revoked_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "aoe_questions" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"requirement_profile_id" uuid NOT NULL,
	"question_key" text NOT NULL,
	"prompt" text NOT NULL,
	"answer_type" text NOT NULL,
	"options" text[] DEFAULT '{}' NOT NULL,
	"required" boolean DEFAULT false NOT NULL,
	"version" integer DEFAULT 1 NOT NULL,
	"sort_order" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "catalog_items" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"program_id" uuid NOT NULL,
	"lab_orderable_id" uuid NOT NULL,
	"lab_test_code" text NOT NULL,
	"code" text NOT NULL,
	"description" text NOT NULL,
	"external_code" text NOT NULL,
	"name" text NOT NULL,
	"kind" text NOT NULL,
	"performing_laboratory" text NOT NULL,
	"specimen_type" text NOT NULL,
	"container" text NOT NULL,
	"min_volume_ml" numeric NOT NULL,
	"collection_methods" text[] DEFAULT '{}' NOT NULL,
	"status" "catalog_item_status" DEFAULT 'active' NOT NULL,
	"sort_order" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "program_grants" (
	"client_id" uuid NOT NULL,
	"program_id" uuid NOT NULL,
	"environment" "environment" NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "program_grants_client_id_program_id_pk" PRIMARY KEY("client_id","program_id")
);
--> statement-breakpoint
CREATE TABLE "programs" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"laboratory_id" uuid NOT NULL,
	"environment" "environment" NOT NULL,
	"name" text NOT NULL,
	"status" "program_status" DEFAULT 'active' NOT NULL,
	"currency" text NOT NULL,
	"jurisdiction" text NOT NULL,
	"service_geography" text[] DEFAULT '{}' NOT NULL,
	"collection_methods" text[] DEFAULT '{}' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "requirement_profiles" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"program_id" uuid NOT NULL,
	"item_id" uuid,
	"region" text,
	"jurisdiction" text NOT NULL,
	"requirement_state" text DEFAULT 'active' NOT NULL,
	"subject_authority_state" "authority_state" DEFAULT 'not_configured' NOT NULL,
	"subject_required_patient_fields" text[] DEFAULT '{}' NOT NULL,
	"order_authority_state" "authority_state" DEFAULT 'not_configured' NOT NULL,
	"order_required_fields" text[] DEFAULT '{}' NOT NULL,
	"provider_authority_state" "authority_state" DEFAULT 'not_configured' NOT NULL,
	"provider_requirement" text DEFAULT 'not_required' NOT NULL,
	"provider_required_fields" text[] DEFAULT '{}' NOT NULL,
	"aoe_authority_state" "authority_state" DEFAULT 'not_configured' NOT NULL,
	"clinical_policy" text DEFAULT 'not_configured' NOT NULL,
	"clinical_ordering_model" text DEFAULT 'not_configured' NOT NULL,
	"clinical_review" text DEFAULT 'not_configured' NOT NULL,
	"clinical_intake_required" boolean DEFAULT false NOT NULL,
	"collection_methods" text[] DEFAULT '{}' NOT NULL,
	"collection_regions" text[] DEFAULT '{}' NOT NULL,
	"billing_authority_state" "authority_state" DEFAULT 'not_configured' NOT NULL,
	"billing_mode_required" boolean DEFAULT false NOT NULL,
	"billing_modes" text[] DEFAULT '{}' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "requirement_profiles_scope_key" UNIQUE NULLS NOT DISTINCT("program_id","item_id","region")
);
--> statement-breakpoint
CREATE TABLE "locations" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"laboratory_id" uuid NOT NULL,
	"environment" "environment" NOT NULL,
	"location_code" text NOT NULL,
	"name" text NOT NULL,
	"region" text NOT NULL,
	"city" text NOT NULL,
	"country" text NOT NULL,
	"timezone" text NOT NULL,
	"collection_methods" text[] DEFAULT '{}' NOT NULL,
	"appointment_required" boolean DEFAULT false NOT NULL,
	"walk_in_allowed" boolean DEFAULT true NOT NULL,
	"service_status" "location_service_status" DEFAULT 'active' NOT NULL,
	"street_address" text,
	"telephone" text,
	"operational_notes" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "subjects" (
	"client_id" uuid NOT NULL,
	"environment" "environment" NOT NULL,
	"external_subject_id" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "subjects_client_id_environment_external_subject_id_pk" PRIMARY KEY("client_id","environment","external_subject_id")
);
--> statement-breakpoint
ALTER TABLE "api_clients" ADD CONSTRAINT "api_clients_laboratory_id_laboratories_id_fk" FOREIGN KEY ("laboratory_id") REFERENCES "public"."laboratories"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_client_id_api_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."api_clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_laboratory_id_laboratories_id_fk" FOREIGN KEY ("laboratory_id") REFERENCES "public"."laboratories"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "aoe_questions" ADD CONSTRAINT "aoe_questions_requirement_profile_id_requirement_profiles_id_fk" FOREIGN KEY ("requirement_profile_id") REFERENCES "public"."requirement_profiles"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "catalog_items" ADD CONSTRAINT "catalog_items_program_id_programs_id_fk" FOREIGN KEY ("program_id") REFERENCES "public"."programs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "program_grants" ADD CONSTRAINT "program_grants_client_id_api_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."api_clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "program_grants" ADD CONSTRAINT "program_grants_program_id_programs_id_fk" FOREIGN KEY ("program_id") REFERENCES "public"."programs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "programs" ADD CONSTRAINT "programs_laboratory_id_laboratories_id_fk" FOREIGN KEY ("laboratory_id") REFERENCES "public"."laboratories"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "requirement_profiles" ADD CONSTRAINT "requirement_profiles_program_id_programs_id_fk" FOREIGN KEY ("program_id") REFERENCES "public"."programs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "requirement_profiles" ADD CONSTRAINT "requirement_profiles_item_id_catalog_items_id_fk" FOREIGN KEY ("item_id") REFERENCES "public"."catalog_items"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "locations" ADD CONSTRAINT "locations_laboratory_id_laboratories_id_fk" FOREIGN KEY ("laboratory_id") REFERENCES "public"."laboratories"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "subjects" ADD CONSTRAINT "subjects_client_id_api_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."api_clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "api_clients_laboratory_idx" ON "api_clients" USING btree ("laboratory_id");--> statement-breakpoint
CREATE UNIQUE INDEX "api_keys_key_hash_idx" ON "api_keys" USING btree ("key_hash");--> statement-breakpoint
CREATE INDEX "api_keys_client_idx" ON "api_keys" USING btree ("client_id");--> statement-breakpoint
CREATE INDEX "api_keys_active_idx" ON "api_keys" USING btree ("client_id","environment") WHERE revoked_at is null;--> statement-breakpoint
CREATE UNIQUE INDEX "aoe_questions_profile_key_idx" ON "aoe_questions" USING btree ("requirement_profile_id","question_key");--> statement-breakpoint
CREATE UNIQUE INDEX "catalog_items_program_code_idx" ON "catalog_items" USING btree ("program_id","code");--> statement-breakpoint
CREATE INDEX "program_grants_client_env_idx" ON "program_grants" USING btree ("client_id","environment");--> statement-breakpoint
CREATE INDEX "programs_laboratory_env_idx" ON "programs" USING btree ("laboratory_id","environment");--> statement-breakpoint
CREATE UNIQUE INDEX "locations_code_idx" ON "locations" USING btree ("laboratory_id","environment","location_code");--> statement-breakpoint
CREATE INDEX "locations_region_idx" ON "locations" USING btree ("laboratory_id","environment","region");