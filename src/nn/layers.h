// Every layer of the nn module, for model builders and tests.
#pragma once

#include "nn/layers/activation.h"
#include "nn/layers/add.h"
#include "nn/layers/batch_norm.h"
#include "nn/layers/concat.h"
#include "nn/layers/conv2d.h"
#include "nn/layers/dropout.h"
#include "nn/layers/flatten.h"
#include "nn/layers/fully_connected.h"
#include "nn/layers/global_avg_pool.h"
#include "nn/layers/mean_squared_error.h"
#include "nn/layers/pool2d.h"
#include "nn/layers/relu.h"
#include "nn/layers/relu6.h"
#include "nn/layers/sigmoid.h"
#include "nn/layers/softmax_cross_entropy.h"
