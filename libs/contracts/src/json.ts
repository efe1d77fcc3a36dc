// JSON value types for free-form members (policies, metadata, event data, StageInfo input).

export type JsonPrimitive = string | number | boolean | null;
export type JsonValue = JsonPrimitive | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };
/** Any JSON value except null (an optional member sent as null is removed by validation). */
export type NonNullJsonValue = Exclude<JsonValue, null>;
