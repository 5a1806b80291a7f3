import { InvokeActionInputSchema, ListActionsInputSchema, type ActionsService } from '@pcg/shared/reads';
import type { ToolDef } from './tool-types.ts';

/** list_actions and invoke_action, thin calls into the shared actions service. */
export function actionTools(actions: ActionsService): ToolDef[] {
  return [
    {
      name: 'list_actions',
      title: 'List actions',
      description:
        'Actions the connected sources offer in your granted sectors (today only home has any), each with its input_schema. Naming a sector you were not granted is refused.',
      inputSchema: ListActionsInputSchema,
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      handler: (args, caller) => actions.listActions(caller, args),
    },
    {
      name: 'invoke_action',
      title: 'Invoke action',
      description:
        'Performs one action, named <sector>.<domain>.<service> as list_actions shows (e.g. home.light.turn_on), with its arguments. Never retried. A source that rejects the action answers ok: false with its reason. ' +
          'The answer names the connection that acted (connection_id); when more than one connection offers the action, pass connection_id or name an entity_id only one of them knows. An entity_id that neither the cache nor the source knows is refused.',
      inputSchema: InvokeActionInputSchema,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
      handler: (args, caller) => actions.invokeAction(caller, args),
    },
  ];
}
