ALTER TABLE "webhook_delivery_attempts" ADD COLUMN "request_headers" jsonb;--> statement-breakpoint
ALTER TABLE "webhook_delivery_attempts" ADD COLUMN "request_body" text;--> statement-breakpoint
ALTER TABLE "webhook_delivery_attempts" ADD COLUMN "response_body" text;--> statement-breakpoint
ALTER TABLE "webhook_delivery_attempts" ADD COLUMN "response_body_truncated" boolean;