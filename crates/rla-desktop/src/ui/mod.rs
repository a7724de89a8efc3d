//! The desktop a policy sees and drives: the Calc-like application, the layout of its window,
//! its accessibility tree, screenshots, pyautogui's key names and OSWorld's action space.

pub mod a11y;
pub mod action;
pub mod app;
pub mod keys;
pub mod layout;
pub mod render;
