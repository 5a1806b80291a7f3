/**
 * Waits for resources started together, each handed over as it starts, and then throws the first
 * failure. With `Promise.all`, one that fails early leaves the others unassigned while they are still
 * starting, so no afterAll stops them (a launched stack outlives the test run).
 */
export async function allStarted(starts: ReadonlyArray<Promise<unknown>>): Promise<void> {
  const failure = (await Promise.allSettled(starts)).find((result) => result.status === 'rejected');
  if (failure) throw failure.reason;
}
