#pragma once
// Umbrella header for the LLM layer.
#include <rath/llm/anthropic_client.hpp>
#include <rath/llm/chat_client.hpp>
#include <rath/llm/credentials.hpp>
#include <rath/llm/embedding.hpp>
#include <rath/llm/error.hpp>
#include <rath/llm/message.hpp>
#include <rath/llm/openai_client.hpp>
#include <rath/llm/provider.hpp>
#include <rath/llm/registry.hpp>
#include <rath/llm/request.hpp>
#include <rath/llm/response.hpp>
#include <rath/llm/stream_accumulator.hpp>
#include <rath/llm/stream_delta.hpp>
#include <rath/llm/usage.hpp>
#include <rath/llm/usage_meter.hpp>
#include <rath/llm/vlm.hpp>
