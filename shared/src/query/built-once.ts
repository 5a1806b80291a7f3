/**
 * For the SQL that depends only on a catalogue field or object: built once per process, since the
 * catalogue's definitions live as long as the process, and building a page's SQL token by token showed as
 * the largest share of a query call's own CPU under load. Slonik tokens are immutable, so one may be
 * embedded in any number of queries.
 */
export function builtOncePer<K extends object, V>(build: (key: K) => V): (key: K) => V {
  const built = new WeakMap<K, V>();
  return (key) => {
    let value = built.get(key);
    if (value === undefined) {
      value = build(key);
      built.set(key, value);
    }
    return value;
  };
}
