#pragma once
// The memory plane: URIs, ops, results, the store handle, backends and their registry,
// and the built-in local backend.
#include <rath/memory/backend.hpp>
#include <rath/memory/capabilities.hpp>
#include <rath/memory/error.hpp>
#include <rath/memory/local.hpp>
#include <rath/memory/op.hpp>
#include <rath/memory/openviking.hpp>
#include <rath/memory/persistence.hpp>
#include <rath/memory/registry.hpp>
#include <rath/memory/result.hpp>
#include <rath/memory/spec.hpp>
#include <rath/memory/store.hpp>
#include <rath/memory/uri.hpp>
