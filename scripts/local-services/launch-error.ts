/** A problem the operator must fix; its message names the cause and says what to install or set. */
export class LaunchError extends Error {}
