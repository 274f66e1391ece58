#pragma once
// Umbrella header for the async layer.
#include <rath/async/block_on.hpp>
#include <rath/async/deadline.hpp>
#include <rath/async/error.hpp>
#include <rath/async/lazy.hpp>
#include <rath/async/runtime.hpp>
#include <rath/async/settled.hpp>
#include <rath/async/strand.hpp>
#include <rath/async/task_group.hpp>
#include <rath/async/this_thread.hpp>
