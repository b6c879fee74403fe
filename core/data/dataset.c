#include "data/dataset.h"
