#pragma once
// Umbrella header for the flow layer and the loop it drives.
#include <rath/flow/agent.hpp>
#include <rath/flow/agent_param.hpp>
#include <rath/flow/compile.hpp>
#include <rath/flow/compressor.hpp>
#include <rath/flow/memory_inject.hpp>
#include <rath/flow/module_holder.hpp>
#include <rath/flow/selector.hpp>
#include <rath/flow/sequential.hpp>
#include <rath/flow/workflow.hpp>
#include <rath/loop/session_compress.hpp>
#include <rath/loop/replay.hpp>
#include <rath/loop/session_loop.hpp>
