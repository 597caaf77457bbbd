/**
 * The one list of the resource types: each type's schema (resources/<type>/schema.ts), in the
 * order of the contract. lib/declaration.ts builds the declaration's union, `RESOURCE_TYPES`
 * (and from it the store's entry types, host/store_schema.ts, and the docs' order,
 * tests/docs/tables_test.ts) from it. A new type is a folder resources/<type>/ and a line here
 * (and, when it has a generic applier, a line in ./appliers.ts); tests/docs/resources_test.ts
 * holds the folders and the lists to each other.
 *
 * This module and the schemas are the bottom layer with lib/: they import lib/ only.
 *
 * @module
 */

import { Directory } from "./directory/schema.ts";
import { File } from "./file/schema.ts";
import { Service } from "./service/schema.ts";
import { Package } from "./package/schema.ts";
import { Container } from "./container/schema.ts";
import { Action } from "./action/schema.ts";

/** Each resource type's schema, in the order of the contract. */
export const RESOURCE_SCHEMAS = [Directory, File, Service, Package, Container, Action] as const;
