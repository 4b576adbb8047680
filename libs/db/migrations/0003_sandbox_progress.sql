CREATE TABLE "sandbox_scenario_progress" (
	"order_id" uuid NOT NULL,
	"scenario" text NOT NULL,
	"steps_applied" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "sandbox_scenario_progress_order_id_scenario_pk" PRIMARY KEY("order_id","scenario")
);
--> statement-breakpoint
ALTER TABLE "sandbox_scenario_progress" ADD CONSTRAINT "sandbox_scenario_progress_order_id_orders_id_fk" FOREIGN KEY ("order_id") REFERENCES "public"."orders"("id") ON DELETE no action ON UPDATE no action;