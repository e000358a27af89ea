// Packs indexed without recursion, for the per-layer lists of a network (weights, states, layer types). An imported
// model has well over a hundred layers, and std::tuple / std::tuple_element cost compile time that grows faster than
// the layer count: std::get<I> converts through a chain of I nested bases, and GCC's -Wsequence-point check (in
// -Wall) walks that chain super-linearly (docs/decisions.md, "Flat per-layer packs"). Here every element is a direct
// base, so element<I> is one derived-to-base step, and type_at picks a type by overload resolution.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail {

template <std::size_t I, class T>
struct indexed_leaf {
  T value;
};

template <class Indices, class... T>
struct indexed_tuple_bases;
template <std::size_t... I, class... T>
struct indexed_tuple_bases<std::index_sequence<I...>, T...> : indexed_leaf<I, T>... {
  static constexpr std::size_t size = sizeof...(T);
};

/// An aggregate holding one T of each kind in order: `indexed_tuple<A, B>{{a}, {b}}` initialises its
/// elements left to right; element<I>(t) reads one.
template <class... T>
using indexed_tuple = indexed_tuple_bases<std::index_sequence_for<T...>, T...>;

template <std::size_t I, class T>
constexpr T& element(indexed_leaf<I, T>& leaf) noexcept {
  return leaf.value;
}
template <std::size_t I, class T>
constexpr const T& element(const indexed_leaf<I, T>& leaf) noexcept {
  return leaf.value;
}

/// f(element) for every element of an indexed_tuple, in index order.
template <class Tuple, class F>
constexpr void for_each_element(Tuple& t, F&& f) {
  [&]<std::size_t... I>(std::index_sequence<I...>) { (f(element<I>(t)), ...); }
  (std::make_index_sequence<std::remove_const_t<Tuple>::size>{});
}

template <std::size_t I, class T>
struct indexed_type {
  using type = T;
};
template <class Indices, class... T>
struct type_index;
template <std::size_t... I, class... T>
struct type_index<std::index_sequence<I...>, T...> : indexed_type<I, T>... {};
template <std::size_t I, class T>
indexed_type<I, T> select_type(const indexed_type<I, T>&);  // declared only: named in decltype

/// The I-th type of T...
template <std::size_t I, class... T>
using type_at = typename decltype(select_type<I>(type_index<std::index_sequence_for<T...>, T...>{}))::type;

/// The type of element I of an indexed_tuple.
template <std::size_t I, class Tuple>
using element_type = std::remove_cvref_t<decltype(element<I>(std::declval<Tuple&>()))>;

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail
