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
#include "nn/layers/losses.h"
#include "nn/layers/pool2d.h"
