export const DOCUMENT: string;
export const OUTPUT: string;
export function generateTypes(document?: string): Promise<string>;
