#include "runs/column.hpp"

namespace evgate {

std::string_view to_string(Column column) {
    switch (column) {
        case Column::local: return "local";
        case Column::runner: return "runner";
        case Column::perturbed: return "perturbed";
    }
    return "local";
}

bool parse_column(std::string_view text, Column& column) {
    for (auto c : {Column::local, Column::runner, Column::perturbed}) {
        if (to_string(c) == text) {
            column = c;
            return true;
        }
    }
    return false;
}

}  // namespace evgate
