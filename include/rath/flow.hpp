#pragma once
// Umbrella header for the flow layer.
#include <rath/flow/agent.hpp>
#include <rath/flow/agent_param.hpp>
#include <rath/flow/compressor.hpp>
#include <rath/flow/selector.hpp>
#include <rath/flow/workflow.hpp>
#include <rath/session_compress.hpp>
#include <rath/session_loop.hpp>
