import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { SettingsViewSchema, UpdateSettingsInputSchema, type SettingsService } from '@pcg/shared/settings';

export type SettingsRoutesDeps = {
  settings: Pick<SettingsService, 'read' | 'update'>;
};

/**
 * The Console's settings (design 4.4), behind the Host check: the public origin that switches the OAuth
 * bridge on, and the person's time zone (design 7.4). The service name is not a setting here; it comes
 * from `SERVICE_NAME`.
 */
export function registerSettingsRoutes(app: FastifyInstance, { settings }: SettingsRoutesDeps): void {
  const routes = app.withTypeProvider<ZodTypeProvider>();

  routes.get('/api/settings', { schema: { response: { 200: SettingsViewSchema } } }, async () => settings.read());

  routes.put(
    '/api/settings',
    { schema: { body: UpdateSettingsInputSchema, response: { 200: SettingsViewSchema } } },
    async (request) => settings.update(request.body, request.id),
  );
}
