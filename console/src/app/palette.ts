/** Okabe and Ito's palette, told apart with every common colour-vision deficiency; repeated past eight. */
export const COLOR_BLIND_SAFE = [
  '#e69f00',
  '#56b4e9',
  '#009e73',
  '#f0e442',
  '#0072b2',
  '#d55e00',
  '#cc79a7',
  '#000000',
];
