import { ConflictError, NotFoundError } from '../errors/index.ts';

export class AgentNotFoundError extends NotFoundError {
  constructor(name: string) {
    super(`no agent named '${name}'`);
  }
}

/** A revoked grant stays revoked: its key cannot be rotated back to life, only created again. */
export class AgentRevokedError extends ConflictError {
  constructor(name: string) {
    super(`agent '${name}' is revoked; create it again with POST /api/agents to issue a new key`);
  }
}
